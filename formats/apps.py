from django.apps import AppConfig


class FormatsConfig(AppConfig):
    name = "formats"
    verbose_name = "Data in and out"
