"""Bad arguments: UsageError is one line on stderr and exit status 2 (lifeline.main prints it)."""
import argparse


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2
        raise UsageError(f"{self.prog}: {message}")
