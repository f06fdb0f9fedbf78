import { projectConfig } from '../../vitest.shared.js';

export default projectConfig('cli', { globalSetup: ['test/support/global-setup.ts'] });
