"""The team's shop agent on LangGraph: a model node and a ToolNode over the store's tools,
cancelling an order held for a person's approval."""

from langchain_core.tools import tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from shopkit import Store, shop_client

from pytest_commerce_evals.adapters import requires_approval
from pytest_commerce_evals.adapters.langchain import langchain_chat_model


def shop_model():
    """A real team returns its chat model here (ChatOpenAI(model=...)); the example runs offline."""
    return langchain_chat_model(shop_client(), model="shop-model")


def build_graph(model, store: Store):
    @tool
    def search_products(query: str) -> list[dict]:
        """Search the catalog."""
        return store.search(query)

    @tool
    def get_product_details(product_id: str) -> dict:
        """One product's details."""
        return store.details(product_id)

    @tool
    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        """Add a product to the cart."""
        return store.add(product_id, quantity)

    @tool
    def save_memory(note: str) -> str:
        """Remember a preference of the customer's."""
        return store.remember(note)

    @tool
    def get_order(order_id: str) -> dict:
        """Look an order up."""
        return store.order(order_id)

    @tool
    def cancel_order(order_id: str, reason: str) -> str:
        """Cancel a pending order (a person approves it)."""
        return store.cancel(order_id, reason)

    tools = [search_products, get_product_details, add_to_cart, save_memory, get_order]
    tools.append(requires_approval(cancel_order))
    bound = model.bind_tools(tools)
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode(tools, handle_tool_errors=True))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()
