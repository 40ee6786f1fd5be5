"""Model side of the loop: provider clients, code extraction, the demo model and the driver.

Importing ``agents`` (or ``agents.models``) imports no LLM SDK and no torch: the SDK of a
provider is imported only when a client of that provider is created (``agents.models.resolve``).
"""
