"""gunicorn reads this file from its working directory (the checkout) before it logs or forks anything.

A bad or missing setting then stops gunicorn with one line and exit status 2. Checked only in the workers
(config/wsgi.py), each worker would exit and gunicorn would start another, again and again.
"""

from config.startup import exit_on_bad_settings

exit_on_bad_settings()
