"""blind31: a thirty-first blind generator -- multimodal training whose work follows its data."""
