"""The team's shop agent on plain OpenAI calls: its tools are functions over the store."""

from shopkit import Store, shop_client

INSTRUCTIONS = "You help shoppers find products, fill their cart and manage their orders."


def openai_client():
    """A real team returns `openai.OpenAI()` here; the example runs offline."""
    return shop_client()


def shop_agent(store: Store) -> dict:
    """The agent: its model, instructions and tools, and the tools a person approves."""
    tools = shop_tools(store)
    return {
        "model": "shop-model",
        "tools": tools,
        "instructions": INSTRUCTIONS,
        "needs_approval": ["cancel_order"],
    }


def shop_tools(store: Store) -> list:
    def search_products(query: str) -> list[dict]:
        """Search the catalog."""
        return store.search(query)

    def get_product_details(product_id: str) -> dict:
        """One product's details."""
        return store.details(product_id)

    def add_to_cart(product_id: str, quantity: int = 1) -> str:
        """Add a product to the cart."""
        return store.add(product_id, quantity)

    def save_memory(note: str) -> str:
        """Remember a preference of the customer's."""
        return store.remember(note)

    def get_order(order_id: str) -> dict:
        """Look an order up."""
        return store.order(order_id)

    def cancel_order(order_id: str, reason: str) -> str:
        """Cancel a pending order (a person approves it)."""
        return store.cancel(order_id, reason)

    return [search_products, get_product_details, add_to_cart, save_memory, get_order, cancel_order]
