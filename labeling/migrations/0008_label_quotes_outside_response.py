"""Label.quotes_outside_response, filled in for the labels already there.

The count is set whenever a label is written; labels written before this field existed get it here,
from their output's transcript (outputs never change once imported). Labels are read output by output
in batches, so a large database does not load every transcript at once.
"""

from django.db import migrations, models

from evals.transcript import Transcript, quotes_of

BATCH = 500  # outputs per round: their transcripts, then their labels


def fill(apps, schema_editor):
    Label = apps.get_model("labeling", "Label")
    Output = apps.get_model("labeling", "Output")
    quoted = Label.objects.exclude(evidence__in=["", "NONE"])
    output_ids = sorted(set(quoted.values_list("annotation__output_id", flat=True)))
    for start in range(0, len(output_ids), BATCH):
        chunk = output_ids[start : start + BATCH]
        transcripts = {
            pk: Transcript(input=input_, tool_calls=list(tool_calls or []), response=response)
            for pk, input_, tool_calls, response in Output.objects.filter(pk__in=chunk).values_list(
                "pk", "case__input", "tool_calls", "response"
            )
        }
        changed = []
        for label in quoted.filter(annotation__output_id__in=chunk).select_related("annotation"):
            quotes = quotes_of(label.evidence, label.more_evidence)
            label.quotes_outside_response = transcripts[label.annotation.output_id].outside_response_only(quotes)
            if label.quotes_outside_response:
                changed.append(label)
        Label.objects.bulk_update(changed, ["quotes_outside_response"], batch_size=BATCH)


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0007_label_more_evidence"),
    ]

    operations = [
        migrations.AddField(
            model_name="label",
            name="quotes_outside_response",
            field=models.PositiveSmallIntegerField(default=0),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
