"""Knowledge service: versioned knowledge on DynamoDB, hybrid retrieval, the search_knowledge tool."""

__version__ = "0.1.0"
