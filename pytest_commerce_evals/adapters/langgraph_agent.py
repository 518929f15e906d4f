"""LangGraph: a team's compiled graph as the plugin's agent, in one line.

    return LangGraphAgent(lambda model: build_graph(model, backend), model=ChatOpenAI(...))
    return LangGraphAgent(build_graph(ChatOpenAI(...), backend))   # no model swap

Give the graph, or a function building it from a chat model: with the function (and the team's
`model`) `scripted(client)` builds the same graph on `langchain_chat_model(client)`, so the
vacuity check, a gold replay and the team's own tests run the graph, its tools and backend with
only the model's decisions scripted. Each turn is `graph.invoke({"messages": [HumanMessage]})`
on a thread of the trial's own (a graph compiled without a checkpointer gets an in-memory one),
and the turn's new messages read as `events_from_langchain` reads them, usage and model name
included.

**A tool that raises** is a failed call, as in the other integrations: when the node running
the model's calls (a `ToolNode` without `handle_tool_errors`, which re-raises all but invalid
arguments) stops the graph on an exception, each of those calls is answered
`ToolMessage(status="error", content="Error: <type>: <message>")` as that node and the graph
goes on from its checkpoint; an exception anywhere else ends the turn as the agent's.

**Approvals.** Wrap a tool that needs a person with `requires_approval(tool)`: before it runs,
it stops the graph (`interrupt`), and the integration resumes it as the case's `approvals` say:
approved, the tool runs; refused, the model is told the person's words and the call reads
`blocked` (gate `approval`); left waiting, the turn ends there, the call blocked, waiting. A
review node of the team's own that interrupts with `{"tool_calls": [...]}` and resumes on
`{call id: True | refusal words}` is decided the same way.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from ..agent import AgentSession
from .core import ConvertOptions, TurnMessages
from .integration import Integration, decisions_for
from .langchain import events_from_langchain, langchain_chat_model

__all__ = ["LangGraphAgent", "requires_approval"]

THREAD = "commerce_evals_thread"
_threads = itertools.count(1)


def requires_approval(tool: Any) -> Any:
    """The LangChain tool `tool`, stopping the graph for a person's approval before it runs:
    `interrupt({"approval": {"name": ..., "args": ...}})`, resumed with `{"approve": True}` or
    `{"refuse": "<words>"}` (the words are the tool's answer; it does not run)."""
    from langchain_core.tools import StructuredTool

    def decide(arguments: dict[str, Any]) -> str | None:
        from langgraph.types import interrupt

        answer = interrupt({"approval": {"name": tool.name, "args": arguments}})
        if isinstance(answer, dict) and answer.get("approve") is True:
            return None
        if isinstance(answer, dict) and isinstance(answer.get("refuse"), str):
            return str(answer["refuse"])
        return f"refused ({answer!r:.80})"

    def run(**arguments: Any) -> Any:
        refusal = decide(arguments)
        return refusal if refusal is not None else tool.invoke(arguments)

    async def arun(**arguments: Any) -> Any:
        refusal = decide(arguments)
        return refusal if refusal is not None else await tool.ainvoke(arguments)

    return StructuredTool(
        name=tool.name,
        description=tool.description,
        args_schema=tool.args_schema,
        func=run,
        coroutine=arun,
    )


class LangGraphAgent(Integration):
    """`LangGraphAgent(graph_or_build, model=None, config=None)`: a compiled graph whose state
    has `messages`, or `build(model)` returning one (then `model` is the team's chat model);
    `config` is merged into every invocation's config (the thread id is the integration's)."""

    def __init__(
        self,
        graph: Any,
        *,
        model: Any = None,
        config: dict[str, Any] | None = None,
        options: ConvertOptions | None = None,
    ) -> None:
        super().__init__(events_from_langchain, options)
        if callable(getattr(graph, "invoke", None)):
            self.build = None
            self._graph = graph
        elif callable(graph):
            self.build = graph
            self._graph = None
        else:
            raise TypeError(
                "LangGraphAgent takes a compiled graph or a function building one from a chat "
                f"model; got {type(graph).__name__}"
            )
        self.model = model
        self.config = dict(config or {})

    def scripted_model(self, client: Any) -> Any:
        if self.build is None:
            from ..errors import ConfigurationError

            raise ConfigurationError(
                "LangGraphAgent(graph) cannot put a scripted model in a graph already built: "
                "pass the function that builds it, LangGraphAgent(build, model=...), so the "
                "vacuity check and gold replays can build it on their model"
            )
        return langchain_chat_model(client)

    def with_model(self, model: Any) -> Integration:
        twin = super().with_model(model)
        assert isinstance(twin, LangGraphAgent)
        twin._graph = None
        return twin

    def graph(self) -> Any:
        if self._graph is None:
            assert self.build is not None
            self._graph = self.build(self.model)
        if getattr(self._graph, "checkpointer", None) in (None, False):
            from langgraph.checkpoint.memory import InMemorySaver

            self._graph.checkpointer = InMemorySaver()  # the turns of a trial share a thread
        return self._graph

    def turn(self, session: AgentSession, message: str) -> TurnMessages:
        from langchain_core.messages import HumanMessage
        from langgraph.types import Command

        graph = self.graph()
        thread = session.scratch.setdefault(THREAD, f"commerce-evals-{next(_threads)}")
        config = {**self.config, "configurable": {**self.config.get("configurable", {})}}
        config["configurable"]["thread_id"] = thread
        start = len(graph.get_state(config).values.get("messages", []))
        out = self._invoke(graph, {"messages": [HumanMessage(message)]}, config)
        refused_ids: list[str] = []
        refused_calls: list[tuple[str, str]] = []
        while out.get("__interrupt__"):
            pending = list(out["__interrupt__"])
            asks = [_calls(p.value) for p in pending]
            if any(a is None for a in asks):
                break  # an interrupt the integration does not know: left to the team's graph
            names = [name for ask in asks for _, name, _ in ask or []]
            decided = decisions_for(session, names)
            if decided is None:
                break  # a person has not decided: the calls read blocked, waiting
            answers = iter(decided)
            resume: dict[str, Any] = {}
            for interrupt, ask in zip(pending, asks, strict=True):
                value, ids, calls = _answer(interrupt.value, ask or [], answers)
                resume[interrupt.id] = value
                refused_ids += ids
                refused_calls += calls
            out = self._invoke(
                graph,
                Command(resume=resume if len(resume) > 1 else next(iter(resume.values()))),
                config,
            )
        new = out["messages"][start:]
        refused_ids += _ids_of(new, refused_calls)
        return TurnMessages(new, interrupts=out.get("__interrupt__"), refused=refused_ids)

    def _invoke(self, graph: Any, what: Any, config: dict[str, Any]) -> Any:
        """`graph.invoke`, with a tool that raises made a failed call: when the graph stopped on
        an exception in the node that runs the last model message's calls (a `ToolNode` that
        does not handle errors, LangGraph's default for all but invalid arguments), each call
        that got no answer is answered `ToolMessage(status="error")` with the exception, as
        that node (`update_state(..., as_node=...)`), and the graph goes on from there; an
        exception anywhere else is the agent's, and raised."""
        for _ in range(_RECOVERIES):
            try:
                return graph.invoke(what, config)
            except Exception as exc:
                answers = _failed_calls(graph, config, exc)
                if answers is None:
                    raise
                node, messages = answers
                graph.update_state(config, {"messages": messages}, as_node=node)
                what = None  # go on from the checkpoint
        return graph.invoke(what, config)


_RECOVERIES = 25
"""Failed tool steps a turn recovers from; past them the graph's exception is raised."""


def _failed_calls(graph: Any, config: dict[str, Any], exc: Exception) -> tuple[str, list] | None:
    """The node that raised `exc` while running the last model message's tool calls, and a
    `ToolMessage(status="error")` for each of those calls it left unanswered; None when the
    graph did not stop there."""
    from langchain_core.messages import AIMessage, ToolMessage

    if type(exc).__module__.split(".")[0] == "langgraph":
        return None  # the graph's own error (a recursion limit, an invalid update)
    state = graph.get_state(config)
    nodes = list(getattr(state, "next", ()) or ())
    messages = list(state.values.get("messages", []))
    if len(nodes) != 1 or not messages or not isinstance(messages[-1], AIMessage):
        return None
    calls = [c for c in messages[-1].tool_calls or [] if c.get("id")]
    if not calls:
        return None
    detail = str(exc)
    error = f"{type(exc).__name__}: {detail}" if detail else type(exc).__name__
    if len(calls) > 1:
        error = f"the step running {len(calls)} tool calls raised {error}"
    return nodes[0], [
        ToolMessage(content=f"Error: {error}", tool_call_id=c["id"], name=c["name"], status="error")
        for c in calls
    ]


def _calls(value: Any) -> list[tuple[str | None, str, Any]] | None:
    """(call id, tool name, arguments) of what an interrupt asks a person about; None when it is
    not an approval the integration knows."""
    if isinstance(value, dict) and isinstance(value.get("approval"), dict):
        ask = value["approval"]
        return [(None, str(ask.get("name")), ask.get("args"))]
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        return [(c.get("id"), str(c.get("name")), c.get("args")) for c in value["tool_calls"]]
    return None


def _answer(
    value: Any, ask: list[tuple[Any, str, Any]], answers: Any
) -> tuple[Any, list[str], list[tuple[str, str]]]:
    """The resume value for one interrupt, the ids of the calls refused in it (a review node's),
    and the (tool, arguments) of a refused wrapped tool, which knows no call id."""
    if "approval" in value:
        decision = next(answers)
        if decision.decision == "approve":
            return {"approve": True}, [], []
        _, name, arguments = ask[0]
        return {"refuse": decision.message or ""}, [], [(name, _key(arguments))]
    out: dict[str, Any] = {}
    ids = []
    for call_id, _, _ in ask:
        decision = next(answers)
        out[call_id] = True if decision.decision == "approve" else (decision.message or "")
        if decision.decision != "approve":
            ids.append(str(call_id))
    return out, ids, []


def _key(arguments: Any) -> str:
    return json.dumps(arguments, sort_keys=True, default=str)


def _ids_of(messages: list[Any], calls: list[tuple[str, str]]) -> list[str]:
    """The ids of the turn's tool calls matching the refused (tool, arguments) of wrapped tools."""
    wanted = set(calls)
    found = []
    for message in messages:
        for call in getattr(message, "tool_calls", None) or []:
            if (call.get("name"), _key(call.get("args"))) in wanted:
                found.append(str(call.get("id")))
    return found
