"""The team's shop agent on pydantic-ai: its tools act on the store it is built on."""

from pydantic_ai import Agent, ModelRetry
from shopkit import Store, shop_client

from pytest_commerce_evals.adapters.pydantic_ai import pydantic_ai_model

INSTRUCTIONS = "You help shoppers find products, fill their cart and manage their orders."


def shop_model():
    """A real team returns its model here ("openai:gpt-4.1-mini"); the example runs offline."""
    return pydantic_ai_model(shop_client(), model="shop-model")


def build_agent(store: Store) -> Agent:
    agent = Agent(shop_model(), instructions=INSTRUCTIONS)

    @agent.tool_plain
    def search_products(query: str) -> list[dict]:
        """Search the catalog."""
        return store.search(query)

    @agent.tool_plain
    def get_product_details(product_id: str) -> dict:
        """One product's details."""
        try:
            return store.details(product_id)
        except KeyError as exc:
            raise ModelRetry(str(exc)) from exc

    @agent.tool_plain
    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        """Add a product to the cart."""
        try:
            return store.add(product_id, quantity)
        except (KeyError, ValueError) as exc:
            raise ModelRetry(str(exc)) from exc

    @agent.tool_plain
    def save_memory(note: str) -> str:
        """Remember a preference of the customer's."""
        return store.remember(note)

    @agent.tool_plain
    def get_order(order_id: str) -> dict:
        """Look an order up."""
        try:
            return store.order(order_id)
        except KeyError as exc:
            raise ModelRetry(str(exc)) from exc

    @agent.tool_plain(requires_approval=True)
    def cancel_order(order_id: str, reason: str) -> str:
        """Cancel a pending order (a person approves it)."""
        try:
            return store.cancel(order_id, reason)
        except ValueError as exc:
            raise ModelRetry(str(exc)) from exc

    return agent
