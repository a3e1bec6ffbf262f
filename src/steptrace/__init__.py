"""steptrace."""
