from __future__ import annotations

from django.urls import path

from . import rubric_views, views

app_name = "labeling"
urlpatterns = [
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon, name="favicon"),
    # Labeling (issue 3): queue, annotation pages, adjudication, progress.
    path("queues/", views.queues, name="queues"),
    path("queues/<int:eval_set_id>/move", views.queue_move, name="queue_move"),
    path("queues/<int:eval_set_id>/next", views.next_output, name="next"),
    path("annotations/", views.my_work, name="my_work"),
    path("annotations/<int:pk>/", views.annotate, name="annotate"),
    path("annotations/<int:pk>/save", views.save_label, name="save_label"),
    path("annotations/<int:pk>/submit", views.submit, name="submit"),
    path("adjudication/", views.adjudication_queue, name="adjudication_queue"),
    path("adjudication/<int:output_id>/<int:criterion_id>/", views.adjudicate, name="adjudicate"),
    path("rubrics/<int:rubric_version>/", rubric_views.rubric_version_page, name="rubric_version"),
    path("rubrics/<int:rubric_version>/new", rubric_views.rubric_edit_page, name="rubric_edit"),
]
