"""Create the example stack's buckets on its S3 service (docker-compose.yml, service s3-init).

It runs once, in the S3 service's own image (moto's server, which has boto3), with the connection the Airflow
services use (AIRFLOW_CONN_DELTACC_S3, from airflow.env): the buckets are made at that connection's endpoint,
with its keys and region, so they are where an operator's aws_conn_id="deltacc_s3" looks. Buckets that exist
already are left alone, so it can run again (moto keeps everything in memory: a restart of the S3 service
empties it).
"""

from __future__ import annotations

import json
import os

import boto3

CONNECTION_ENV = "AIRFLOW_CONN_DELTACC_S3"
BUCKETS_ENV = "S3_BUCKETS"


def main() -> None:
    connection = json.loads(os.environ[CONNECTION_ENV])
    extra = connection.get("extra") or {}
    if isinstance(extra, str):
        extra = json.loads(extra)
    region = extra.get("region_name") or "us-east-1"
    client = boto3.client(
        "s3",
        endpoint_url=extra["endpoint_url"],
        region_name=region,
        aws_access_key_id=connection.get("login"),
        aws_secret_access_key=connection.get("password"),
    )
    existing = {bucket["Name"] for bucket in client.list_buckets().get("Buckets", [])}
    for name in os.environ[BUCKETS_ENV].split():
        if name in existing:
            print(f"bucket {name} exists at {extra['endpoint_url']}")
            continue
        if region == "us-east-1":  # S3 refuses a LocationConstraint naming us-east-1
            client.create_bucket(Bucket=name)
        else:
            client.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})
        print(f"bucket {name} created at {extra['endpoint_url']}")


if __name__ == "__main__":
    main()
