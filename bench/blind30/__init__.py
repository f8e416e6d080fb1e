"""blind30: a thirtieth blind generator -- a fleet in the middle of a driver rollout (README)."""
