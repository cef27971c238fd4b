"""What a platform team watches: metrics through Airflow's ``Stats`` (``metrics``) and the operators'
link to the conflicts view (``links``).
"""
