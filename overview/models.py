"""overview stores nothing of its own: its pages read the other apps' models.

The module is here because Django sends post_migrate only for an app with a models module, and the lead
group's permissions are set on overview's post_migrate (apps.py), once every app before it has its own.
"""
