import { projectConfig } from '../../vitest.shared.js';

export default projectConfig('dashboard', { include: ['src/**/*.test.ts'] });
