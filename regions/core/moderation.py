"""Moderation of a board, as pure rules: hiding a player's entry and showing it again. No I/O, no clock.

- **Actions.** A moderator hides a player on a board (``HIDE``) or shows them again (``RESTORE``),
  with a reason. Actions are decided in the board's home region and numbered there, per board, from
  1 (``sequence``); each is carried as a record through the home's awards topic and replicated like
  an award, so every region applies it at the same position of the home's stream.
- **Idempotency.** Asking for what the player already is (hiding a hidden player, restoring a shown
  one) records nothing and answers the player's last action; restoring a player never hidden on the
  board is refused, naming ``userId``.
- **Applying.** A processor applies an action only when its sequence is newer than the player's last
  one (``is_newer``): replays, copies and a restore from the changelog change nothing. A hidden player
  keeps their state and every award keeps counting; each of their states on the board gets a new
  version with ``hidden`` set, which the projection reads as "no entry" (as a ROLLING board's player
  with no points left), and showing them again is one more version with the total as it is then.
- **Where.** An action changes the player's state on the board itself, or on a windowed board those
  of the current and the previous period (``state_boards``); awards of later periods find it by the
  board's id. A CLOSING or CLOSED period whose home projection shows the player otherwise than the
  action asks (``republishes``) is changed too, and gets a new result version (as a CLOSED board).
"""

from __future__ import annotations

from dataclasses import dataclass

from regions.core.boards import BoardStatus
from regions.core.lifecycle import MAX_REASON
from regions.core.periods import WindowSpec, period_of, previous_period
from regions.core.validation import FieldError, player_action_errors
from schema.scoped import period_board_id

HIDE, RESTORE = "HIDE", "RESTORE"
MAX_PAGE = 200  # moderation log entries per page


@dataclass(frozen=True, slots=True)
class Moderation:
    """A player's last moderation action on a board, as a processor applied it."""

    sequence: int
    hidden: bool


@dataclass(frozen=True, slots=True)
class ModerationRequest:
    board_id: str
    user_id: str
    hidden: bool
    reason: str

    @property
    def action(self) -> str:
        return HIDE if self.hidden else RESTORE


def parse_moderation(
    board_id: str, user_id: str, reason: str, *, hidden: bool
) -> ModerationRequest | list[FieldError]:
    """The request, or every field error in it (the board id is checked by the caller, as every id)."""
    return player_action_errors(user_id, reason, MAX_REASON) or ModerationRequest(board_id, user_id, hidden, reason)


def is_newer(current: Moderation | None, sequence: int) -> bool:
    """An action numbered ``sequence`` changes a player whose last applied action is ``current``."""
    return current is None or sequence > current.sequence


def already(last_hidden: bool | None, request: ModerationRequest) -> bool | FieldError:
    """True when the player already is what ``request`` asks (their last action answers it), False
    when a new action is to be recorded; an error when restoring a player never hidden on the board.
    ``last_hidden`` is the player's last action's (None: none)."""
    if last_hidden is None:
        if request.hidden:
            return False
        return FieldError("userId", f"{request.user_id!r} was never hidden on {request.board_id!r}: nothing to restore")
    return last_hidden == request.hidden


def state_boards(board_id: str, spec: WindowSpec | None, now_ms: int) -> list[str]:
    """The state ids an action decided at ``now_ms`` changes: the board's own, or on a calendar
    window those of the current and the previous period."""
    if spec is None or spec.rolling:
        return [board_id]
    current = period_of(spec, now_ms)
    return [period_board_id(board_id, previous_period(spec, current).key), period_board_id(board_id, current.key)]


def republishes(hidden: bool, status: BoardStatus | None, shown: bool | None) -> bool:
    """A period of ``status`` (None: not closing yet) needs a new result version for an action that
    hides (or shows again) a player whose home projection there shows them (``shown``), holds them
    hidden (False) or holds no state of them (None): only a closing or closed period that holds the
    player otherwise than the action asks."""
    if status is None or status is BoardStatus.OPEN or shown is None:
        return False
    return shown == hidden
