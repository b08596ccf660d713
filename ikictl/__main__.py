import sys

from ikictl.cli import main

sys.exit(main())
