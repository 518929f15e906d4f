"""A hand-made stand-in for a τ²-bench checkout's airline tools module, in its layout."""


class AirlineTools(ToolKitBase):  # noqa: F821 - parsed, never imported
    @is_tool(ToolType.READ)  # noqa: F821
    def get_reservation_details(self, reservation_id: str) -> dict:
        """Get the details of a reservation.

        Args:
            reservation_id: The reservation id, such as 'ZFA04Y'.
        """

    @is_tool(ToolType.WRITE)  # noqa: F821
    def cancel_reservation(self, reservation_id: str) -> dict:
        """Cancel the whole reservation.

        Args:
            reservation_id: The reservation id, such as 'ZFA04Y'.
        """
