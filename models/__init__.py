"""Online detectors: pure, small, one concept a module, each with a doctest."""
