"""The knowledge store on one DynamoDB table (``knowledge_store.DynamoDBKnowledgeStore``) and the
table's stream records (``stream``)."""
