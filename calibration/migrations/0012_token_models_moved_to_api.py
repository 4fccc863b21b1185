"""GateToken and VerdictPush now live in api (api 0001, same tables, same rows): calibration's state forgets them
and GateResult.token names api.GateToken. Nothing changes in the database: the foreign key still points at the
table calibration_gatetoken."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("api", "0001_initial"),
        ("calibration", "0011_shared_models_in_evals"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="gateresult",
                    name="token",
                    field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name="results", to="api.gatetoken"),
                ),
                migrations.DeleteModel(name="VerdictPush"),
                migrations.DeleteModel(name="GateToken"),
            ],
            database_operations=[],
        ),
    ]
