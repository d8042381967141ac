"""Drop-in facades with other memory libraries' APIs (``compat.mem0``)."""
