"""The real-cluster backend: a raw JSON client, an object cache fed by Kopf, the Backend."""
