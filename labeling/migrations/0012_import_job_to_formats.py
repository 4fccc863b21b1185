"""ImportJob now belongs to formats (formats 0001): dropped from labeling's state only, the table stays."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0011_shared_models_in_evals"),
        ("formats", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="ImportJob")],
            database_operations=[],
        ),
    ]
