"""The exception tree of knowledge; every message is one user-facing line naming what is wrong.

KnowledgeError                 base: one-line, user-facing message
├── ConfigError                bad or unknown setting (file + key + problem)
├── IndexNotFoundError         no index yet -> run `knowledge reindex-all`
├── IndexIncompatibleError     the index was built by another model/chunker -> reindex-all
├── IndexCorruptError          unreadable index or metadata file
├── IndexLockedError           another run holds the lock past the timeout
├── ModelUnavailableError      weights package missing, or the model failed to build/load
├── ModelVerificationError     a built model disagrees with the reference vectors
├── PathOutsideRepositoryError a requested path escapes the repository root
├── GitError                   a git command failed (the command and git's own first line)
├── StorageError               `.knowledge/` cannot be written: read-only, permission, disk full
├── WriteRefusedError          a write would leave its root or go through a symlink (the write gate)
└── SourceFileError            one file unreadable/unparseable: recorded, never aborts a run
"""

from __future__ import annotations


class KnowledgeError(Exception):
    """Base class: the message is shown to the user as is."""


class ConfigError(KnowledgeError):
    pass


class IndexNotFoundError(KnowledgeError):
    pass


class IndexIncompatibleError(KnowledgeError):
    pass


class IndexCorruptError(KnowledgeError):
    pass


class IndexLockedError(KnowledgeError):
    pass


class ModelUnavailableError(KnowledgeError):
    pass


class ModelVerificationError(ModelUnavailableError):
    pass


class PathOutsideRepositoryError(KnowledgeError):
    pass


class SourceFileError(KnowledgeError):
    pass


class StorageError(KnowledgeError):
    pass


class WriteRefusedError(KnowledgeError):
    pass
