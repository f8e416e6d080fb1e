"""``python -m detector.cli``: the same as the ``faultline`` command."""

import sys

from detector.cli.main import main

sys.exit(main())
