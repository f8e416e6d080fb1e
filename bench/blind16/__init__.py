"""blind16: a sixteenth generator written blind to faultline's detectors (round 25)."""
