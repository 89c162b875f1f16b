import sys

try:
    from .cli.main import entry
except KeyboardInterrupt:  # Ctrl-C while the package loads: nothing started, nothing to keep
    print("memaudit: interrupted", file=sys.stderr)
    sys.exit(130)

entry()
