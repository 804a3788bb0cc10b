"""``python -m ferrumkv_py [CONFIG_FILE] [--name value ...]``."""
import sys

from .cli import main

sys.exit(main())
