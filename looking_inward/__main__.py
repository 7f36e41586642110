"""``python -m looking_inward <command>``: what dvc.yaml's stages run."""

import sys

from looking_inward.cli import main

sys.exit(main())
