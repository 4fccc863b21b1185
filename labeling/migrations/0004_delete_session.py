"""Back to Django's own database sessions (django.contrib.sessions): the custom session table goes.

Its rows are not copied: everyone signed in is signed out once (README, "Upgrading").
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0003_session"),
    ]

    operations = [
        migrations.DeleteModel(name="Session"),
    ]
