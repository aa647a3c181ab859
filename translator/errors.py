"""Errors a user can act on. The CLI prints their message on one line and exits with `exit_code`."""


class TranslatorError(Exception):
    """A user-facing failure: the message says what, where, and what to do."""

    exit_code = 1


class ConfigError(TranslatorError):
    """A bad config file, key, type or value, or a bad command-line option."""

    exit_code = 2


class DataError(TranslatorError):
    """A corpus that cannot be read or leaves nothing to train on."""


class CheckpointError(TranslatorError):
    """A checkpoint that is missing, corrupt, or does not fit the run."""


class RunInUseError(TranslatorError):
    """Another process is training the same run."""

    exit_code = 2
