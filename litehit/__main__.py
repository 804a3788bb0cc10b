"""``python -m litehit ...``: the same command line as the ``litehit`` console script."""
from litehit.cli import main

if __name__ == "__main__":
    main()
