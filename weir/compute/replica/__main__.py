import sys

from weir.compute.replica.server import main

sys.exit(main())
