"""The leader's disruption look ahead wakes the controller only for news (activities.disruption.trigger)."""

from __future__ import annotations

import threading

from activities.disruption.decision import DecideInput, DisruptionRound, LookAhead
from activities.disruption.trigger import RESIGNAL_SECONDS, DisruptionTrigger
from scheduling.disruption import CandidateRef, Command
from scheduling.disruption.settled import Settlement, StateKey


def empty(name: str) -> DisruptionRound:
    candidate = CandidateRef(node=f"node-{name}", node_claim=name, node_pool="default")
    command = Command(method="Emptiness", reason="Empty", action="Delete", candidates=[candidate], message="empty")
    return DisruptionRound(command=command, executable=True)


QUIET = DisruptionRound(rejections={"PodDoNotDisrupt": 1})


class Controller:
    """The decisions the look ahead finds, in order (the last repeats), and the wakes it sends."""

    def __init__(self, *decisions: DisruptionRound | Exception | None) -> None:
        self.decisions = list(decisions)
        self.inputs: list[DecideInput] = []
        self.memories: list[LookAhead | None] = []
        self.wakes = 0
        self.wake_fails = False
        self.now = 0.0

    def decide(self, inp: DecideInput, memory: LookAhead | None) -> tuple[DisruptionRound | None, LookAhead]:
        """None among the decisions: the cluster was settled. What each look found goes to the next."""
        self.inputs.append(inp)
        self.memories.append(memory)
        found = self.decisions.pop(0) if len(self.decisions) > 1 else self.decisions[0]
        if isinstance(found, Exception):
            raise found
        return found, LookAhead(Settlement(StateKey(len(self.inputs), 0), frozenset(), True, None))

    def wake(self) -> None:
        if self.wake_fails:
            raise RuntimeError("Temporal unreachable")
        self.wakes += 1

    def trigger(self) -> DisruptionTrigger:
        return DisruptionTrigger(self.decide, self.wake, DecideInput(), clock=lambda: self.now)


def test_the_first_look_wakes_and_the_same_quiet_finding_never_again() -> None:
    controller = Controller(QUIET)
    trigger = controller.trigger()
    assert [trigger.look() for _ in range(4)] == [True, False, False, False]
    controller.now = 10 * RESIGNAL_SECONDS
    assert not trigger.look()
    assert controller.wakes == 1


def test_a_changed_finding_wakes_and_a_changed_count_does_not() -> None:
    more = DisruptionRound(rejections={"PodDoNotDisrupt": 2})  # a pass that judged more nodes
    budget = DisruptionRound(rejections={"PodDoNotDisrupt": 2, "Budget": 1})
    controller = Controller(QUIET, QUIET, more, budget, empty("a"), empty("b"))
    trigger = controller.trigger()
    assert [trigger.look() for _ in range(6)] == [True, False, False, True, True, True]


def test_a_command_still_to_execute_wakes_again_after_the_resignal_period() -> None:
    controller = Controller(empty("a"))
    trigger = controller.trigger()
    assert trigger.look()
    controller.now = RESIGNAL_SECONDS - 1
    assert not trigger.look()
    controller.now = RESIGNAL_SECONDS
    assert trigger.look()
    assert controller.wakes == 2


def test_a_command_of_a_method_not_executed_is_announced_once() -> None:
    controller = Controller(empty("a").model_copy(update={"executable": False}))
    trigger = controller.trigger()
    trigger.look()
    controller.now = 10 * RESIGNAL_SECONDS
    assert not trigger.look()


def test_a_failed_wake_is_retried_at_the_next_look() -> None:
    controller = Controller(empty("a"))
    controller.wake_fails = True
    trigger = controller.trigger()
    assert not trigger.look()
    controller.wake_fails = False
    assert trigger.look()
    assert controller.wakes == 1


def test_a_failed_decision_is_logged_and_retried() -> None:
    controller = Controller(RuntimeError("the API server is down"), QUIET)
    trigger = controller.trigger()
    assert not trigger.look()
    assert trigger.look()


def test_the_skipped_single_node_candidates_go_first_at_the_next_look() -> None:
    controller = Controller(DisruptionRound(single_node_skipped=["b"]), QUIET)
    trigger = controller.trigger()
    trigger.look()
    trigger.look()
    assert [inp.single_node_first for inp in controller.inputs] == [[], ["b"]]


def test_run_looks_until_stopped() -> None:
    stop = threading.Event()
    controller = Controller(QUIET)

    def wake_then_stop() -> None:
        controller.wakes += 1
        stop.set()

    trigger = DisruptionTrigger(controller.decide, wake_then_stop, DecideInput(), interval=0.01)
    trigger.run(stop)  # returns: the first look wakes, which sets `stop`
    assert controller.wakes == 1


def test_a_settled_cluster_is_no_news_and_each_look_gets_what_the_last_found() -> None:
    controller = Controller(QUIET, None, None, empty("a"))
    trigger = controller.trigger()
    assert [trigger.look() for _ in range(4)] == [True, False, False, True]
    keys = [m.settlement.key.watched if m and m.settlement else None for m in controller.memories]
    assert keys == [None, 1, 2, 3]
    assert [inp.single_node_first for inp in controller.inputs] == [[], [], [], []]
