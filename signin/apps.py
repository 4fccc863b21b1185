from django.apps import AppConfig


class SigninConfig(AppConfig):
    name = "signin"
    verbose_name = "Sign-in with OpenID Connect"
