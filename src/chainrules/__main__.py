"""``python -m chainrules demo`` runs the tour."""

import sys


def main(argv: list[str]) -> int:
    if argv[1:2] == ["demo"]:
        from .demo import main as demo

        demo()
        return 0
    print("usage: python -m chainrules demo")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
