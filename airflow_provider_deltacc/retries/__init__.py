"""What Airflow does after a try fails: the ``retry_policy`` that decides from the classified conflict
(``policy``) and the report that spans tries, each with its reason (``tries``).
"""
