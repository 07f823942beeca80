"""The shared store's locks: a row lock on the index's own row, which only the roles that see that row (row-level
security) can take, and every wait bounded (a teammate that stalls must not stall this command for ever). An
advisory lock's key shows in `pg_locks` to every role while it is held, so another team could take it next."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .pg_schema import SESSION_LOCK_TIMEOUT_SECONDS, StoreUnavailableError

if TYPE_CHECKING:
    from .pg_schema import Connection, IndexTarget

LOCK_WAIT_SECONDS = 120  # the longest a writer waits for another writer of its index before it says who holds it


def take_lock(conn: Connection, index_id: int, what: str, wait_seconds: float = LOCK_WAIT_SECONDS) -> None:
    """This transaction's lock on index `index_id` (its row, FOR NO KEY UPDATE: the chunks' foreign keys still
    check against it), waited for at most `wait_seconds`; then one line naming the session that holds it."""
    import psycopg

    conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{int(wait_seconds * 1000)}ms",))
    try:
        with conn.transaction():  # a savepoint: the timeout leaves the outer transaction usable for the message
            conn.execute("SELECT id FROM knowledge_indexes WHERE id = %s FOR NO KEY UPDATE", (index_id,))
    except psycopg.errors.LockNotAvailable:
        raise StoreUnavailableError(
            f"{what}: another writer ({holder_of(conn, index_id)}) has held its lock for over {wait_seconds:.0f}s; "
            "try again when it finishes"
        ) from None
    finally:
        conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{SESSION_LOCK_TIMEOUT_SECONDS * 1000}ms",))


def holder_of(conn: Connection, index_id: int) -> str:
    """Who holds the lock on index `index_id`'s row, in words, as far as this role may see: the row's locker is its
    xmax, a transaction whose own lock names its process."""
    row = conn.execute(
        "SELECT l.pid, a.usename, a.application_name FROM knowledge_indexes i "
        "JOIN pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = i.xmax AND l.granted "
        "LEFT JOIN pg_stat_activity a ON a.pid = l.pid WHERE i.id = %s AND l.pid <> pg_backend_pid() LIMIT 1",
        (index_id,),
    ).fetchone()
    if row is None:
        return "a session that has since let go"
    return f"process {row[0]}" + (f" of {row[1]}" if row[1] else "") + (f", {row[2]}" if row[2] else "")


def publish_live(conn: Connection, t: IndexTarget, index_id: int) -> None:
    """Make index `index_id` the live one of its repository, branch and kind, in one transaction. The branch's live
    indexes are row-locked (only roles that see them can lock them: a hash of repository and branch was a key any
    role could take first); two first builds of one target racing meet the unique index, and the later retries."""
    import psycopg

    for attempt in range(3):
        try:
            with conn.transaction():
                # the live indexes of this branch, row-locked: only roles that see them can lock them (a hash of
                # repository and branch was a key any role could take first)
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (f"{LOCK_WAIT_SECONDS * 1000}ms",))
                conn.execute(
                    "SELECT id FROM knowledge_indexes WHERE repository = %s AND branch = %s AND live FOR UPDATE",
                    (t.repository, t.branch),
                )
                conn.execute(  # through the owner's function: a member holds no DELETE
                    "SELECT knowledge_delete_index(id) FROM knowledge_indexes "
                    "WHERE repository = %s AND branch = %s AND kind = %s AND live",
                    (t.repository, t.branch, t.kind),
                )
                conn.execute("UPDATE knowledge_indexes SET live = true WHERE id = %s", (index_id,))
            break
        except psycopg.errors.UniqueViolation:
            if attempt == 2:  # another build of this target published first, each time: say so
                raise StoreUnavailableError(f"{t.describe()}: another build kept publishing first") from None
        except psycopg.errors.LockNotAvailable:
            raise StoreUnavailableError(
                f"{t.describe()}: another build of this branch held it for over {LOCK_WAIT_SECONDS}s while "
                "publishing; run it again"
            ) from None
