"""One policy file's step on a request's way: its decision, then its waiting.

A :class:`FileStep` joins a :class:`~scrapy_googlerobots.fetching.policy_file.PolicyFile`
to its :class:`~.waiting_room.WaitingRoom` and answers, for one request whose
origin is known:

- in ``process_request`` (:meth:`FileStep.check`): let it through (judged by
  the copy in force, or by the one it waited for), refuse it, hand it back to
  the engine to be parked, or wait inline;
- at ``request_scheduled`` and on adoption (:meth:`FileStep.must_wait`):
  whether it must be parked in this file's room, and with which record;
- beside an earlier file's wait (:meth:`FileStep.prefetch`): start this
  file's fetch at the same time, so the request seldom waits twice.

The crawl runs the steps of its files in order (robots.txt first); a step
never asks which file it handles.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

from scrapy import Request
from scrapy.http import Response

from scrapy_googlerobots.fetching.policy_file import FileRefs
from scrapy_googlerobots.policy.decision import Action, is_the_copy_waited_for
from scrapy_googlerobots.waiting.origin_state import FAILED_META
from scrapy_googlerobots.waiting.waiting_room import disallow_message

if TYPE_CHECKING:
    from scrapy_googlerobots.fetching.policy_file import PolicyFile
    from scrapy_googlerobots.policy.origin import OriginRef
    from scrapy_googlerobots.policy.record import PolicyRecord
    from scrapy_googlerobots.waiting.waiting_room import WaitingRoom

__all__ = ["FileStep", "FileSteps"]

_Outcome: TypeAlias = Request | Response | Coroutine[Any, Any, Request | Response | None] | None


class FileStep:
    """One policy file's decision and waiting for requests (see the module doc).

    ``hand_back(request, room, ref, record)`` hands a request back to the
    engine to be parked in ``room`` (False: it must wait inline).
    """

    __slots__ = ("_clock", "_get", "_hand_back", "file", "refs", "room")

    def __init__(
        self,
        file: PolicyFile,
        room: WaitingRoom,
        *,
        clock: Callable[[], float],
        hand_back: Callable[[Request, WaitingRoom, OriginRef, PolicyRecord | None], bool],
    ) -> None:
        self.file = file
        self.room = room
        self.refs = FileRefs(file)
        self._get = room.store.get
        self._clock = clock
        self._hand_back = hand_back

    def check(self, request: Request, ref: OriginRef) -> Request | Coroutine[Any, Any, None] | None:
        """``request`` of origin ``ref`` meets this file in ``process_request``.

        None: it goes on (judged); a Request: handed back to be parked; a
        coroutine: the inline wait (it judges at its end). Raises
        ``IgnoreRequest`` for a refusal.
        """
        file = self.file
        failed = request.meta.pop(FAILED_META, None)
        if isinstance(failed, BaseException):
            raise failed  # its origin's fetch broke on the crawl's own exception
        if not file.needs(request):
            return None
        fref = self.refs.of(ref)
        if fref is None:
            return None
        record = self._get(fref.key)
        if record is not None and self._clock() < record.expires_at:
            file.judge(request, record)  # a fresh copy: judged by it, whatever came before
            return None
        meta = request.meta
        reason = meta.get(file.gave_up_meta)
        if reason:
            file.gave_up(request, reason)
            return None
        if is_the_copy_waited_for(meta.pop(file.released_meta, None), record):
            file.judge(request, record)
            return None
        now = self._clock()
        room = self.room
        decision = room.decide(record, now)
        if decision.action is Action.APPLY:
            if decision.fetch:
                room.refresh(fref, request, record)
            file.judge(request, record if decision.rules else None)
            return None
        if decision.action is Action.DROP:
            raise room.reporter.dropped(request, disallow_message(file, fref), origin=fref.key)
        if self._hand_back(request, room, fref, record):
            return request
        return room.wait_inline(request, fref, record)

    def must_wait(
        self, request: Request, ref: OriginRef, now: float
    ) -> tuple[OriginRef, PolicyRecord | None] | bool:
        """Whether ``request`` must be parked for this file: its file ref and record; False:
        not for this file (the next one may hold it); True: nowhere (``process_request``
        decides: its wait ran out, or it is dropped).

        Neither judges nor raises: ``process_request`` does, with the
        request's errback (a bad declaration, a drop).
        """
        file = self.file
        meta = request.meta
        if meta.get(file.gave_up_meta):
            return True
        try:
            if not file.needs(request):
                return False
        except ValueError:
            return True  # process_request raises it, with the request's errback
        fref = self.refs.of(ref)
        if fref is None:
            return False
        record = self._get(fref.key)
        if record is not None and now < record.expires_at:
            return False
        if is_the_copy_waited_for(meta.get(file.released_meta), record):
            return False
        decision = self.room.decide(record, now)
        if decision.action is Action.WAIT:
            return fref, record
        if decision.action is Action.DROP:
            return True
        if decision.fetch:
            self.room.refresh(fref, request, record)
        return False

    def prefetch(self, ref: OriginRef, request: Request) -> None:
        """``request`` waits for an earlier file: fetch this one at the same time."""
        fref = self.refs.of(ref)
        if fref is None:
            return
        record = self._get(fref.key)
        if self.room.decide(record, self._clock()).fetch:
            self.room.refresh(fref, request, record)


class FileSteps:
    """Every file's step, in the order a request meets them (robots.txt first).

    ``after_first(request, ref)``: what follows when the first file lets a
    request through (the robots.txt copy for the spider's own request of it),
    a response that answers it, or None. :attr:`after_wait`: what a request
    let through after waiting inline for a file must still wait for.
    """

    __slots__ = ("_after_first", "after_wait", "steps")

    def __init__(
        self,
        steps: Sequence[FileStep],
        after_first: Callable[[Request, OriginRef], Response | None],
    ) -> None:
        self.steps = steps
        self._after_first = after_first
        self.after_wait: Callable[[Request, OriginRef], Awaitable[Request | None]] | None = None
        """The send slot of an origin whose pace is known only now (None: nothing)."""

    def run(self, request: Request, ref: OriginRef, start: int = 0) -> _Outcome:
        """Each file's step from the ``start``-th on: a refusal raises, a hand-back or an
        answer is returned, an inline wait (a coroutine) resumes the steps when it ends."""
        steps = self.steps
        for index in range(start, len(steps)):
            outcome = steps[index].check(request, ref)
            if outcome is None:
                answer = None if index else self._after_first(request, ref)
                if answer is not None:
                    return answer
            elif isinstance(outcome, Request):
                return outcome
            else:
                return self._resume(outcome, request, ref, index)
        return None

    async def _resume(
        self, wait: Coroutine[Any, Any, None], request: Request, ref: OriginRef, index: int
    ) -> Request | Response | None:
        await wait
        outcome = (None if index else self._after_first(request, ref)) or self.run(
            request, ref, index + 1
        )
        if outcome is None:
            after = self.after_wait
            return None if after is None else await after(request, ref)
        if isinstance(outcome, (Request, Response)):
            return outcome
        return await outcome  # a later file's wait, which asks after_wait itself
