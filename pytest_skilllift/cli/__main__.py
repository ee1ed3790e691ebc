"""``python -m pytest_skilllift.cli``: the ``skilllift`` command."""

import sys

from pytest_skilllift.cli.main import main

sys.exit(main())
