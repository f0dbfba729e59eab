"""Use cases. Services see only ports and the domain; ``knowledge.bootstrap`` wires them."""
