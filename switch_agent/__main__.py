import sys

from switch_agent.agent import main

sys.exit(main())
