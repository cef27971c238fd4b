"""What a platform team watches: metrics through Airflow's ``Stats`` (``metrics``), the operators' link to
the conflicts view (``links``), and the secrets kept out of the task logs it reads (``secrets``: Airflow's
secrets masker).
"""
