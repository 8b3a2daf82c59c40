"""python -m rlpost verl-path: print the path of the verl reward file, for
custom_reward_function.path=$(python -m rlpost verl-path)."""

import os
import sys


def main(argv):
    if argv == ["verl-path"]:
        print(os.path.join(os.path.dirname(os.path.abspath(__file__)), "verl_reward.py"))
        return 0
    print("usage: python -m rlpost verl-path", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
