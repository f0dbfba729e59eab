"""API Gateway's HTTP API, locally: the gateway that routes requests to the functions (``gateway``),
its HTTP/1.1 server (``gateway_server``), the payload 2.0 shapes (``http_api``), the Lambda
authorizers' answer cache (``authorizer_cache``) and the throttle of failed authentications per
client address (``address_throttle``)."""
