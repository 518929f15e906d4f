"""The team's shop agent on the OpenAI Agents SDK: one agent, its tools reading the store from
the run's context."""

from agents import Agent, RunContextWrapper, function_tool
from shopkit import Store, shop_client

from pytest_commerce_evals.adapters.openai_agents import agents_model

INSTRUCTIONS = "You help shoppers find products, fill their cart and manage their orders."


@function_tool
def search_products(ctx: RunContextWrapper[Store], query: str) -> list[dict]:
    """Search the catalog."""
    return ctx.context.search(query)


@function_tool
def get_product_details(ctx: RunContextWrapper[Store], product_id: str) -> dict:
    """One product's details."""
    return ctx.context.details(product_id)


@function_tool
def add_to_cart(ctx: RunContextWrapper[Store], product_id: str, quantity: int = 1) -> str:
    """Add a product to the cart."""
    return ctx.context.add(product_id, quantity)


@function_tool
def save_memory(ctx: RunContextWrapper[Store], note: str) -> str:
    """Remember a preference of the customer's."""
    return ctx.context.remember(note)


@function_tool
def get_order(ctx: RunContextWrapper[Store], order_id: str) -> dict:
    """Look an order up."""
    return ctx.context.order(order_id)


@function_tool(needs_approval=True)
def cancel_order(ctx: RunContextWrapper[Store], order_id: str, reason: str) -> str:
    """Cancel a pending order (a person approves it)."""
    return ctx.context.cancel(order_id, reason)


def shop_model():
    """A real team names its model here ("gpt-4.1-mini"); the example runs offline."""
    return agents_model(shop_client(), model_name="shop-model")


shop_agent = Agent(
    name="shop",
    instructions=INSTRUCTIONS,
    model=shop_model(),
    tools=[search_products, get_product_details, add_to_cart, save_memory, get_order, cancel_order],
)
