"""A hand-made stand-in for a τ²-bench checkout's retail tools module: the same layout (a toolkit
class whose tool methods carry `@is_tool` and Google-style docstrings), read by the importer's
parser and never run."""

from typing import List, Optional


class RetailTools(ToolKitBase):  # noqa: F821 - parsed, never imported
    def _get_order(self, order_id: str) -> dict:
        """Not a tool: no decorator."""

    @is_tool(ToolType.READ)  # noqa: F821
    def find_user_id_by_name_zip(self, first_name: str, last_name: str, zip: str) -> str:
        """Find a user id by first name, last name and zip code.
        The first line alone is the short description; this one starts the long one.

        Args:
            first_name: The first name of the customer, such as 'Ada'.
            last_name: The last name of the customer, such as 'Lee'.
            zip (str): The zip code of the customer, such as '78701'.

        Returns:
            str: The user id.
        """

    @is_tool(ToolType.WRITE)  # noqa: F821
    def cancel_pending_order(self, order_id: str, reason: str) -> dict:
        """Cancel a pending order.

        Args:
            order_id: The order id, such as '#W0000001'. Mind the '#'
                at its start.
            reason: Either 'no longer needed' or 'ordered by mistake'.

        Returns:
            The order after the cancellation.
        """

    @is_tool(ToolType.WRITE)  # noqa: F821
    def return_delivered_order_items(
        self, order_id: str, item_ids: List[str], payment_method_id: Optional[str] = None
    ) -> dict:
        """Return some items of a delivered order.

        Args:
            order_id: The order id.
            item_ids: The item ids to return.
        """

    @is_tool(ToolType.GENERIC)  # noqa: F821
    def transfer_to_human_agents(self, summary: str) -> str:
        """Transfer the user to a human agent, with a summary of the issue."""
