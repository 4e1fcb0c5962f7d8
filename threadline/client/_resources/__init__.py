"""A class per group of the API, as ``Threadline``'s attributes (``client.threads``)."""
