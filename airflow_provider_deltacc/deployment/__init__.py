"""How the provider meets a deployment: its ``[deltacc]`` config section (``config``), the environment
variables it reads (``environment``), where tasks run (``placement``) and a Spark Connect server started
with the cached Delta jars (``connect_server``).
"""
