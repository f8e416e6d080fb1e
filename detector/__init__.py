"""faultline: streaming detection of slow GPU nodes and silent data corruption."""
