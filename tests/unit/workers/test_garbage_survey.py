"""activities.garbage_collection.survey: the leader asks the garbage collector for a round only when its look finds
something, and a failed look neither asks nor stops the loop."""

from __future__ import annotations

import threading

from activities.garbage_collection.collector import CollectInput
from activities.garbage_collection.survey import GarbageSurvey
from kube.watch_cache import WatchCache


class Collector:
    """Answers `survey` with the next of `answers` (an exception is raised), recording what it was given."""

    def __init__(self, *answers: list[str] | Exception) -> None:
        self.answers = list(answers)
        self.asked: list[tuple[CollectInput, WatchCache | None]] = []

    def survey(self, inp: CollectInput, cache: WatchCache | None = None) -> list[str]:
        self.asked.append((inp, cache))
        answer = self.answers.pop(0) if self.answers else []
        if isinstance(answer, Exception):
            raise answer
        return answer


def test_a_round_is_asked_for_only_when_the_look_finds_something() -> None:
    collector = Collector([], ["instance i-1: leaked (untracked)"])
    requests: list[int] = []
    cache = WatchCache(())
    survey = GarbageSurvey(collector, lambda: requests.append(1), 300, 120.0, cache)  # type: ignore[arg-type]

    assert survey.look() == [] and requests == []
    assert survey.look() == ["instance i-1: leaked (untracked)"] and requests == [1]
    assert collector.asked == [(CollectInput(min_age_seconds=300), cache)] * 2


def test_a_failed_look_is_logged_and_the_next_one_runs() -> None:
    stop = threading.Event()
    collector = Collector(RuntimeError("DescribeInstances throttled"), ["NodeClaim a: its instance is gone"])
    requests: list[int] = []

    def request() -> None:
        requests.append(1)
        stop.set()

    GarbageSurvey(collector, request, 120, 0.001).run(stop)  # type: ignore[arg-type]
    assert len(collector.asked) == 2 and requests == [1]
