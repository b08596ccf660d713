import sys

from daemon.process.cli import main

sys.exit(main())
