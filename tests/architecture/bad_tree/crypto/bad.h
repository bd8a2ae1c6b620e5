// Deliberate violation for the checker test: crypto/ may not see worker/.
#include "worker/job.h"
